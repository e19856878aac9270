import type { Env } from './environment.js';
import { isForeignVariable } from './foreign-variables.js';

/** A variable set in the environment that configures nothing, though it looks meant to. */
export interface UnknownVariable {
  variable: string;
  /** The variable of ours it resembles most. */
  resembles: string;
  /** One sentence naming both, for the start log and `config`. */
  message: string;
}

/**
 * The variables of `env` that are not ours but look like ours: a few edits away from one of `ours`
 * (letters swapped, missing, extra or wrong, case aside), or starting with a prefix ours use
 * (`STRIPE_`, `ADMIN_`, `DATABASE_`). `ours` is every variable the configuration reads, so a new
 * setting is covered by itself. `referenced` are variables that something else refers to (a
 * configuration file's `${VAR}`): they are meant to be there.
 */
export function unknownVariables(env: Env, ours: readonly string[], referenced: Iterable<string> = []): UnknownVariable[] {
  const known = new Set([...ours, ...referenced]);
  const prefixes = new Set(ours.filter((name) => name.includes('_')).map((name) => name.slice(0, name.indexOf('_') + 1)));
  const found: UnknownVariable[] = [];
  for (const [variable, value] of Object.entries(env)) {
    if (value === undefined || known.has(variable) || isForeignVariable(variable, value)) continue;
    const resembles = resemblance(variable.toUpperCase(), ours, prefixes);
    if (resembles) found.push({ variable, resembles, message: `${variable} is not a webhook-inbox variable; did you mean ${resembles}?` });
  }
  return found.sort((a, b) => a.variable.localeCompare(b.variable));
}

/**
 * Ours closest to `name` when close enough; else, of ours sharing its prefix, the one sharing most of
 * its words (`STRIPE_SECRET`: `STRIPE_WEBHOOK_SECRET`), then the closest; else null.
 */
function resemblance(name: string, ours: readonly string[], prefixes: ReadonlySet<string>): string | null {
  const byDistance = ours.map((candidate) => ({ candidate, distance: editDistance(name, candidate) })).sort((a, b) => a.distance - b.distance);
  const nearest = byDistance[0];
  if (nearest && nearest.distance <= allowedEdits(nearest.candidate)) return nearest.candidate;
  const prefix = [...prefixes].find((p) => name.startsWith(p));
  if (!prefix) return null;
  const words = new Set(name.split('_'));
  const shared = (candidate: string) => candidate.split('_').filter((word) => words.has(word)).length;
  const family = byDistance.filter(({ candidate }) => candidate.startsWith(prefix));
  return family.sort((a, b) => shared(b.candidate) - shared(a.candidate) || a.distance - b.distance)[0]?.candidate ?? null;
}

/** Two edits for most names; one for short ones (`PORT`, `HOST`), where two would reach unrelated words. */
function allowedEdits(name: string): number {
  return name.length < 8 ? 1 : 2;
}

/**
 * Damerau-Levenshtein distance (optimal string alignment): insertions, deletions, substitutions and
 * swaps of two neighbours each count one.
 */
export function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}
