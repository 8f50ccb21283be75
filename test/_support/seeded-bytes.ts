import { seededRandom } from '../../src/random.js';

/** `length` bytes drawn from `seed`: the same on every machine, unlike randomBytes, so chunk boundaries are exact. */
export function seededBytes(seed: number, length: number): Buffer {
  const draw = seededRandom(seed);
  const bytes = Buffer.allocUnsafe(length);
  for (let i = 0; i < length; i += 1) bytes[i] = Math.floor(draw() * 256);
  return bytes;
}
