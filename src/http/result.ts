/**
 * hmdp's response wrapper: `{success, errorMsg, data, total}`, null fields omitted.
 * Its front end reads `success` first, then `data` (and `total` for pages).
 */
export interface Result<T = unknown> {
  success: boolean;
  errorMsg?: string;
  data?: T;
  total?: number;
}

export function ok<T>(data?: T, total?: number): Result<T> {
  const result: Result<T> = { success: true };
  if (data !== undefined && data !== null) result.data = data;
  if (total !== undefined) result.total = total;
  return result;
}

export function fail(errorMsg: string): Result<never> {
  return { success: false, errorMsg };
}

/**
 * JSON.stringify cannot encode bigint. IDs are 64-bit, and a JavaScript client would round a
 * JSON number above 2^53, so every bigint goes out as a decimal string.
 */
export function stringifyResult(payload: unknown): string {
  try {
    // Fast path: a replacer function takes V8 off its fast serializer, and most answers hold no bigint.
    return JSON.stringify(payload);
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    return JSON.stringify(payload, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value));
  }
}
