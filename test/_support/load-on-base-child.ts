// A process of its own that registers a base model folder and loads a classifier trained on it
// (spawned with `node --import tsx`), as a restarted service would:
//   load-on-base-child.ts <base model name> <folder> <model dir>
// stdout gets one JSON line: { loaded: true } or { error: <SvcError code>, message }.
import { Classifier, SvcError, registerBaseModel } from '../../src/index.js';

const [name, folder, modelDir] = process.argv.slice(2) as [string, string, string];
try {
  registerBaseModel(name, folder);
  const classifier = await Classifier.load(modelDir);
  classifier.dispose();
  process.stdout.write(`${JSON.stringify({ loaded: true })}\n`);
} catch (error) {
  if (!(error instanceof SvcError)) throw error;
  process.stdout.write(`${JSON.stringify({ error: error.code, message: error.message })}\n`);
}
