/**
 * The oldest Node.js this package runs on; `engines` in package.json says the same (a test keeps the
 * two equal). 20.12 brought `util.parseEnv`, which reads the `.env` file.
 */
export const MINIMUM_NODE = '20.12.0';

/** Null on a supported Node, else the one line to show instead of a stack trace. */
export function unsupportedNode(version: string): string | null {
  const [major = 0, minor = 0, patch = 0] = version.split('.').map((part) => Number.parseInt(part, 10));
  const [minMajor = 0, minMinor = 0, minPatch = 0] = MINIMUM_NODE.split('.').map(Number);
  const supported = major !== minMajor ? major > minMajor : minor !== minMinor ? minor > minMinor : patch >= minPatch;
  return supported ? null : `webhook-inbox needs Node.js ${MINIMUM_NODE} or later; this is Node.js ${version}. Install a current Node.js LTS and run it again.`;
}

// Imported first by the library's entry point and by the CLI: this module runs before any module that
// needs a newer Node, and none of those is linked in a way an older Node refuses before it runs.
const problem = unsupportedNode(process.versions.node);
if (problem) throw new Error(problem);
