import type { KyselyPlugin, RootOperationNode } from 'kysely';

/**
 * A Kysely plugin that shows `observe` every statement it is about to run (`db.withPlugin(...)`,
 * `tx.withPlugin(...)`) and changes nothing, so a test can count the statements a path takes.
 */
export function watchingQueries(observe: (node: RootOperationNode) => void): KyselyPlugin {
  return {
    transformQuery: ({ node }) => {
      observe(node);
      return node;
    },
    transformResult: async ({ result }) => result,
  };
}
