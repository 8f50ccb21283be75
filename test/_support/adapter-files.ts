// What an adapter model's folder holds when it is written without the transformers.js files (a trained model in the
// service's hub, `save(dir, { transformersJs: false })`): no encoder, no ONNX graph. Sorted, as readdir's result is
// compared after a sort.
export const kAdapterFolderFiles: readonly string[] = Object.freeze([
  'adapter_config.json',
  'adapter_model.safetensors',
  'example_embeddings.safetensors',
  'examples.json',
  'head.json',
  'manifest.json',
]);
