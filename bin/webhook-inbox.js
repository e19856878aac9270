#!/usr/bin/env node
// Runs the TypeScript sources directly (tsx), so there is no build step between a checkout and a run.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
