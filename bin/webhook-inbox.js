#!/usr/bin/env node
// The CLI runs the compiled service in dist/: `npm run build` makes it, and `npm ci` on a clone makes it
// through the `prepare` script. The Node.js version is checked first, before anything that needs a newer
// Node is loaded, so an unsupported Node gets one line instead of a stack trace. Plain syntax on purpose:
// this file must parse on the old Node it turns away.
function fail(message) {
  console.error(message);
  process.exit(1);
}

import('../dist/supported-node.js').then(
  function () {
    return import('../dist/cli/main.js');
  },
  function (error) {
    if (error && error.code === 'ERR_MODULE_NOT_FOUND') fail('webhook-inbox: dist/ is missing; run `npm run build` (or `npm ci`, which builds it) first');
    fail(error && error.message ? error.message : String(error));
  },
);
