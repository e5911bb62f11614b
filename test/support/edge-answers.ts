/** An HTTP answer as the edge tests compare them: the edge's against the app's own. */
export interface Answer {
  status: number;
  body: string;
  headers: Record<string, string>;
}

/** Hop-by-hop and per-server headers, and x-request-id (checked by its rule, not its value). */
const UNCOMPARED = new Set(['date', 'connection', 'keep-alive', 'server', 'transfer-encoding', 'x-request-id', 'x-upstream']);

/** What must be the same in the edge's answer and the app's: status, body, the headers that matter. */
export const comparable = (answer: Answer) => ({
  status: answer.status,
  body: answer.body,
  headers: Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !UNCOMPARED.has(name))),
});

/** x-request-id as the app makes one (crypto.randomUUID), and the edge too. */
export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
