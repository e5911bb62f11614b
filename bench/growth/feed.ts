/** Time to publish a blog to 10, 1,000 and 10,000 followers. */
import { spreadOf, startServer, type World } from '../harness/index.js';
import type { FeedRow } from './report.js';

/** Authors with 10, 1,000 and 10,000 followers in tb_follow; each publishes three blogs through POST /api/blog. */
export async function feedPublish(world: World, followerCounts: number[]): Promise<FeedRow[]> {
  const needed = followerCounts.length + Math.max(...followerCounts);
  if (world.users.length < needed) throw new Error(`feed: ${needed} users needed, the world has ${world.users.length}`);
  const server = await startServer({ env: { ...world.env, SECKILL_WORKER: 'false', WRITE_LIMIT_BLOGS_PER_HOUR: '0' } });
  const rows: FeedRow[] = [];
  try {
    const followers = world.users.slice(followerCounts.length);
    for (const [i, count] of followerCounts.entries()) {
      const author = world.users[i]!;
      for (let start = 0; start < count; start += 1_000) {
        const batch = followers.slice(start, Math.min(count, start + 1_000)).map((follower) => ({ user_id: follower.id, follow_user_id: author.id }));
        await world.db.insertInto('tb_follow').values(batch).execute();
      }
      const times: number[] = [];
      for (let blog = 0; blog < 4; blog++) {
        const started = performance.now();
        const response = await fetch(`${server.url}/api/blog`, {
          method: 'POST',
          headers: { authorization: author.token, 'content-type': 'application/json' },
          body: JSON.stringify({ shopId: world.shopId, title: `Growth ${count} #${blog}`, content: 'Noodles worth the queue.' }),
        });
        const body = await response.text();
        if (!body.startsWith('{"success":true')) throw new Error(`POST /api/blog answered ${response.status}: ${body.slice(0, 200)}`);
        if (blog > 0) times.push(performance.now() - started); // the first one warms the route up
      }
      rows.push({ followers: count, ms: spreadOf(times) });
    }
  } finally {
    await server.stop();
  }
  return rows;
}
