import { solveChallenge } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/web/pbkdf2';
import { ApiError, api, type Voucher } from './api';

/**
 * A gated sale's purchase token (src/modules/seckill/gate/purchase-gate.ts), asked for once the
 * sale is open. A captcha sale's challenge is an ALTCHA proof of work: this browser solves it
 * (WebCrypto PBKDF2, altcha-lib's solver; `onSolving` says while), nothing to read or type.
 */
export async function purchaseToken(v: Voucher, onSolving: (solving: boolean) => void): Promise<string> {
  if (v.purchaseGate !== 'captcha') return (await api.purchaseToken(v.id)).data.token;
  onSolving(true);
  let payload: string;
  try {
    payload = await solveCaptcha(v.id);
  } finally {
    onSolving(false);
  }
  return (await api.purchaseToken(v.id, payload)).data.token;
}

/** The ALTCHA payload of the sale's solved challenge: base64 JSON {challenge, solution}. */
async function solveCaptcha(voucherId: string): Promise<string> {
  const { data: challenge } = await api.captcha(voucherId);
  let solution: Awaited<ReturnType<typeof solveChallenge>>;
  try {
    solution = await solveChallenge({ challenge, deriveKey });
  } catch {
    // WebCrypto is there only on https (or localhost) pages.
    throw new ApiError(0, '此浏览器无法完成人机验证（需要 HTTPS）');
  }
  if (solution === null) throw new ApiError(0, '人机验证超时，请重试');
  return btoa(JSON.stringify({ challenge, solution }));
}
