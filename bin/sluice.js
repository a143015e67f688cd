#!/usr/bin/env node
// The `sluice` command: register the TypeScript loader, then run the CLI written in TypeScript.
import { register } from 'tsx/esm/api';

register();
await import('../lib/cli/main.ts');
