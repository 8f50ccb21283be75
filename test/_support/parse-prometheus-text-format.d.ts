// The package ships no types; test/_support/prometheus.ts gives its output a shape.
declare module 'parse-prometheus-text-format' {
  const parse: (text: string) => unknown;
  export default parse;
}
