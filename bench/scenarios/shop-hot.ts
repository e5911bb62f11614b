/** `shop-hot`: the cached shop route beside the same JSON served from memory, on one server. */
import { repeatedRequest, startServer, type LoadTarget, type ServerProcess, type World } from '../harness/index.js';
import { httpResult, SERVER_ENV, type HttpResult, type PreparedScenario } from './prepared-scenario.js';

/** Resolves to [cached route, bare route]; one server serves both (profiled into `cpuProfDir` if given). */
export async function prepareShopHot(world: World, cpuProfDir?: string): Promise<PreparedScenario<[HttpResult, HttpResult]>> {
  const server = await startServer({ env: { ...world.env, ...SERVER_ENV }, ...(cpuProfDir ? { cpuProfDir } : {}) });
  try {
    const cachedPath = `/api/shop/${world.shopId}`;
    const barePath = `/bench/shop/${world.shopId}`;
    await sameAnswer(server, cachedPath, barePath);
    const cached: LoadTarget = {
      name: 'shop-hot',
      url: server.url,
      serverPid: server.child.pid,
      source: repeatedRequest('GET', cachedPath),
    };
    const bare: LoadTarget = {
      name: 'shop-hot bare route',
      url: server.url,
      serverPid: server.child.pid,
      source: repeatedRequest('GET', barePath),
    };
    return {
      targets: [cached, bare],
      finish: async (measurements) => {
        await server.stop();
        return [httpResult(cached, 'GET /api/shop/{id}', measurements), httpResult(bare, 'GET /bench/shop/{id}', measurements)];
      },
      stop: () => server.stop(),
    };
  } catch (error) {
    await server.stop();
    throw error;
  }
}

/** Both routes must give the same answer, or comparing them means nothing. */
async function sameAnswer(server: ServerProcess, cachedPath: string, barePath: string): Promise<void> {
  const [cachedBody, bareBody] = await Promise.all([fetchText(server.url + cachedPath), fetchText(server.url + barePath)]);
  if (cachedBody !== bareBody) throw new Error(`shop-hot: ${cachedPath} and ${barePath} answer differently:\n${cachedBody}\n${bareBody}`);
}

async function fetchText(url: string): Promise<string> {
  const response = await fetch(url);
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}: ${text.slice(0, 200)}`);
  return text;
}
