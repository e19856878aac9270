// Preloaded (NODE_OPTIONS=--import) into a CLI process by a test: prints every V8 flag the process
// sets at run time, so the test can see what was asked of V8 and not only its effect.
import process from 'node:process';
import v8 from 'node:v8';
import { syncBuiltinESMExports } from 'node:module';

const setFlagsFromString = v8.setFlagsFromString;
v8.setFlagsFromString = (flags) => {
  process.stderr.write(`v8 flag set: ${flags}\n`);
  setFlagsFromString(flags);
};
syncBuiltinESMExports();
