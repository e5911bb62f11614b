import { defineConfig } from 'vite';
import vue from '@vitejs/plugin-vue';

// The app's front end. `npm run build:web` writes web/dist, which the Fastify server serves at /;
// `npx vite web` serves it with reload and proxies /api and /imgs to the server on :8081.
export default defineConfig({
  root: import.meta.dirname,
  plugins: [vue()],
  build: { outDir: 'dist', emptyOutDir: true, chunkSizeWarningLimit: 600 },
  server: {
    proxy: { '/api': 'http://127.0.0.1:8081', '/imgs': 'http://127.0.0.1:8081' },
  },
});
