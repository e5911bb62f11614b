import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../../kit/redis-servers.js';

const repo = fileURLToPath(new URL('../../..', import.meta.url));

/** Debian's nginx, installed with apt-get when missing (as scripts/topology.sh does). */
function ensureNginx(): string {
  const install = `as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
    command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null; }`;
  execFileSync('bash', ['-c', install], { stdio: 'inherit' });
  return spawnSync('bash', ['-c', 'command -v nginx || echo /usr/sbin/nginx'], { encoding: 'utf8' }).stdout.trim();
}

/**
 * The course's front end as the course deploys it: its pages (here the fixture page that talks
 * like them, fixtures/hmdp-pages) in an nginx root, uploads in that root's imgs folder, and the
 * course's nginx.conf, whose `/api` location strips the prefix and proxies to the backend — the
 * app, or the edge in front of it.
 */
export interface CourseSite {
  /** The root's imgs folder: the app's UPLOAD_DIR, as the course keeps its uploads there. */
  readonly imgs: string;
  /** Starts the course's nginx in front of `backend` (host:port); returns its URL. */
  start(backend: string): Promise<string>;
  stop(): void;
}

export function courseSite(): CourseSite {
  const nginx = ensureNginx();
  const dir = mkdtempSync(join(tmpdir(), 'hmdp-compat-nginx-'));
  const site = join(dir, 'site');
  mkdirSync(join(site, 'js'), { recursive: true });
  writeFileSync(join(site, 'index.html'), readFileSync(join(repo, 'test/system/web/fixtures/hmdp-pages/index.html')));
  copyFileSync(join(repo, 'node_modules/axios/dist/axios.min.js'), join(site, 'js/axios.min.js'));
  const conf = join(dir, 'nginx.conf');
  let started = false;
  return {
    imgs: join(site, 'imgs'),
    async start(backend) {
      const listen = await freePort();
      const user = process.getuid?.() === 0 ? 'user root root;' : '';
      writeFileSync(
        conf,
        `${user}
daemon on;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 64; }
http {
  include /etc/nginx/mime.types;
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  server {
    listen 127.0.0.1:${listen};
    root ${site};
    # The course's nginx.conf, as it is:
    location /api {
      default_type application/json;
      keepalive_timeout 30s;
      keepalive_requests 1000;
      proxy_http_version 1.1;
      rewrite /api(/.*) $1 break;
      proxy_pass_request_headers on;
      proxy_next_upstream error timeout;
      proxy_pass http://${backend};
    }
  }
}
`,
      );
      execFileSync(nginx, ['-p', dir, '-c', conf, '-e', join(dir, 'error.log')], { stdio: 'inherit' });
      started = true;
      return `http://127.0.0.1:${listen}`;
    },
    stop() {
      if (started) spawnSync(nginx, ['-p', dir, '-c', conf, '-e', join(dir, 'error.log'), '-s', 'stop']);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
