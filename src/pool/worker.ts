// The piscina worker entry: native work runs here, never on the main thread.
import { loadAddon } from '../native/load.js';

/** Loads the addon in this worker; task handlers are added by the pool module. */
export default function ping(): string {
  return loadAddon().cpuInfo().level;
}
