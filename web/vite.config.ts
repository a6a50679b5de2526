// The Baton dashboard, served by the controller at /ui/ (src/api/ui.cc).
//
// The production build depends on nothing outside this folder and may be written anywhere
// (`npx vite build --outDir DIR --emptyOutDir`). For development against a running controller:
//
//   BATON_URL=http://127.0.0.1:8470 npx vite            # proxies /v1 to it
//   BATON_URL=... BATON_CSP=1 npx vite preview           # the built files, under the server's CSP
import { defineConfig } from 'vite';
import type { ProxyOptions } from 'vite';

const target = process.env.BATON_URL;
const proxy: Record<string, ProxyOptions> | undefined = target
  ? {
      '/v1': {
        target,
        changeOrigin: true,
        secure: false,
        ws: false,
        // Send a stream's headers at once (the event stream, a followed log), as the
        // controller does, rather than with its first bytes.
        configure(p) {
          p.on('proxyRes', (proxyRes, _req, res) => {
            if (proxyRes.headers['transfer-encoding'] !== 'chunked') return;
            setImmediate(() => {
              if (!res.headersSent) res.flushHeaders();
            });
          });
        },
      },
    }
  : undefined;

// The policy src/api/ui.cc sends with the page, to try the build under it.
const csp =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; " +
  "connect-src 'self'; font-src 'self'; object-src 'none'; frame-ancestors 'none'; " +
  "base-uri 'none'; form-action 'self'";

export default defineConfig({
  base: '/ui/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    target: 'es2020',
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    cssCodeSplit: false,
    reportCompressedSize: true,
    chunkSizeWarningLimit: 200,
  },
  server: { proxy },
  preview: {
    proxy,
    headers: process.env.BATON_CSP ? { 'Content-Security-Policy': csp } : undefined,
  },
});
