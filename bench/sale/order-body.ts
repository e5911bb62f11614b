import type { Pool } from 'undici';

/** A user's order of a voucher through an undici pool of the server: the answer's body. */
export async function orderBody(pool: Pool, voucherId: string, token: string): Promise<string> {
  const { body } = await pool.request({ method: 'POST', path: `/api/voucher-order/seckill/${voucherId}`, headers: { authorization: token } });
  return body.text();
}
