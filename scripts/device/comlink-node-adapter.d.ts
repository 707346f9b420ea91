// Types for Comlink's Node adapter as Node imports it (with its .mjs extension): those it ships
// beside it, in comlink/dist/esm/node-adapter.d.ts.
declare module 'comlink/dist/esm/node-adapter.mjs' {
  export { default } from 'comlink/dist/esm/node-adapter';
}
