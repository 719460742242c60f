import { defineConfig } from 'vite';

// The pages are served by the node under /admin/audit; every asset is a hashed file under
// /admin/audit/assets/, from this origin only (the node's CSP allows 'self' and nothing else).
export default defineConfig({
  base: '/admin/audit/',
  build: {
    outDir: 'dist',
    assetsDir: 'assets',
    emptyOutDir: true,
    // Everything inline would need 'unsafe-inline' in the CSP: keep assets as files.
    assetsInlineLimit: 0,
    sourcemap: false,
    target: 'es2022',
  },
});
