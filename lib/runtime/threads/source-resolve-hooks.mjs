// Module resolve hooks (node:module register) of a source checkout: see source-loader.mjs.
let entries = {};

export function initialize(data) {
  entries = data.entries;
}

export function resolve(specifier, context, nextResolve) {
  const url = entries[specifier];
  return url === undefined ? nextResolve(specifier, context) : nextResolve(url, context);
}
