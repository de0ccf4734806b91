// The HTTP ceiling: Fastify's hello world (a JSON POST answered with JSON), same Fastify version, same process
// layout and the same load generator as the Wharf scenarios.

import Fastify from 'fastify';
import { memory, serveParent } from '../lib/child.ts';

const app = Fastify({ logger: false });
app.post('/', async () => ({ hello: 'world' }));
await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
const port = typeof address === 'object' && address ? address.port : 0;

serveParent({ mem: () => memory() }, () => app.close());
process.send!({ ready: true, url: `http://127.0.0.1:${port}`, pid: process.pid });
