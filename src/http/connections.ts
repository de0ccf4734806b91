import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * What a closing server does with its connections. Node's closeIdleConnections() ends keep-alive connections between
 * two requests, but not one a client opened and never sent a request on (an HTTP client pool's spare): Node treats it
 * as busy until its headers timeout (30 s), and the close waits for it. So such connections are tracked here and
 * closed with the idle ones.
 */
export interface ClosingConnections {
  /** Close the connections that carry no request now: idle keep-alive ones and never-used ones. */
  closeIdle(): void;
}

export function trackConnections(server: Server): ClosingConnections {
  const unused = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    unused.add(socket);
    socket.once('close', () => unused.delete(socket));
  });
  server.on('request', (request: { socket: Socket }) => unused.delete(request.socket));
  return {
    closeIdle: () => {
      server.closeIdleConnections();
      for (const socket of unused) socket.destroy();
    },
  };
}
