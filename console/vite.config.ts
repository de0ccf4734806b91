import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));
const repo = fileURLToPath(new URL('..', import.meta.url));
/** `npm run dev:console` proxies the API to a server started with `npm start` (or WHARF_URL). */
const api = process.env['WHARF_URL'] ?? 'http://127.0.0.1:8000';

// The console is served by the Wharf server at /console (src/http/console.ts) from console/dist.
export default defineConfig(({ command }) => ({
  root: here,
  base: '/console/',
  publicDir: 'public',
  logLevel: 'warn',
  clearScreen: false,
  oxc: { jsx: { runtime: 'automatic', importSource: 'react', development: command !== 'build' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
    chunkSizeWarningLimit: 1024,
  },
  // The same production build whatever NODE_ENV the caller has (vitest sets 'test', a shell may set 'development').
  define: command === 'build' ? { 'process.env.NODE_ENV': JSON.stringify('production') } : {},
  server: {
    fs: { allow: [repo] },
    proxy: { '/v1': api, '/v2': api },
  },
}));
