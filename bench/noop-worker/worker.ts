// The worker of the cold-start benchmark: Wharf's TypeScript SDK with a handler that does nothing, started by the
// process executor from `file://bench/noop-worker` with the environment the supervisor injects.

import { start } from '../../src/sdk/worker/index.ts';

start({ handler: () => ({}) });
