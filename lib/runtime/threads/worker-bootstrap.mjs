// Worker threads start here: register the TypeScript loader, then run the worker (and later the job module).
import { register } from 'tsx/esm/api';

register();
await import('./worker-main.ts');
