import type { Challenge } from 'altcha-lib';
import { reactive } from 'vue';
import type { paths } from './generated/api';
import { toastError } from './toast';

/**
 * Typed client of the server's /api: unwraps {success, errorMsg, data, total}, sends the token
 * kept in sessionStorage as `authorization`, and on 401 forgets it and goes to the login page.
 * Ids are decimal strings (64-bit order ids exceed 2^53): never turn them into numbers.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

interface Wrapper<T> {
  success: boolean;
  errorMsg?: string;
  data?: T;
  total?: number;
}

/*
 * The answers' and bodies' types come from the server's OpenAPI document (generated/api.d.ts,
 * `npm run gen:api`): a route's `data` is its response schema's.
 */
type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type Operation<P extends keyof paths, M extends Method> = paths[P][M];
type Answer<P extends keyof paths, M extends Method> = Operation<P, M> extends { responses: { 200: { content: { 'application/json': infer A } } } } ? A : never;
/** What a route's `data` holds when it succeeds (undefined for the routes that answer none). */
export type Data<P extends keyof paths, M extends Method> = 'data' extends keyof Answer<P, M> ? Exclude<Answer<P, M>['data'], undefined> : undefined;
/** A route's JSON body. */
export type Body<P extends keyof paths, M extends Method> = Operation<P, M> extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;

export type User = Data<'/api/user/{id}', 'get'>;
/** GET /user/me: the user plus the session's role (the admin page link shows for admins only). */
export type Me = Data<'/api/user/me', 'get'>;
export type ShopType = Data<'/api/shop-type/list', 'get'>[number];
/** A shop; `distance` (metres) on a search by position. */
export type Shop = Data<'/api/shop/of/type', 'get'>[number];
/** Seckill vouchers have a stock, a window and a purchase gate (`token` or `captcha`: a purchase token first). */
export type Voucher = Data<'/api/voucher/list/{shopId}', 'get'>[number];
/** A sale's settings after an administrator's change; stock is the total offered, left what remains. */
export type SaleControl = Data<'/api/voucher/seckill/{id}', 'patch'>;
export type SaleAuditEntry = Data<'/api/voucher/seckill/{id}/audit', 'get'>[number];
export type Order = Data<'/api/voucher-order/{id}', 'get'>;
export type OrderState = Order['state'];
/** One line of GET /voucher-order/of/me. */
export type MyOrder = Data<'/api/voucher-order/of/me', 'get'>[number];
export type Blog = Data<'/api/blog/{id}', 'get'>;
export type SignMonth = Data<'/api/user/sign/month', 'get'>;

const TOKEN_KEY = 'token';
export const session = reactive<{ token: string | null; user: Me | null }>({
  token: sessionStorage.getItem(TOKEN_KEY),
  user: null,
});

export function setToken(token: string | null): void {
  session.token = token;
  session.user = null;
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** Set by main.ts: where a 401 sends the user (the login page, back here afterwards). */
export let onUnauthorized: () => void = () => {};
export function setUnauthorizedHandler(handler: () => void): void {
  onUnauthorized = handler;
}

export interface CallOptions {
  body?: unknown;
  form?: FormData;
  /** Do not show a toast for a failure (the caller shows the message itself). */
  quiet?: boolean;
  timeoutMs?: number;
  headers?: Record<string, string>;
}

/**
 * The language the server writes `errorMsg` in: the page's (index.html's `lang`, the language of
 * every label), else the browser's. Sent on every call, so a refusal reads like the page around it.
 */
export const uiLanguage = (): string => document.documentElement.lang || navigator.language || 'zh-CN';

// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- T is the caller's statement of what the route returns: the one unchecked cast of the server's JSON, in one place
export async function call<T>(method: string, path: string, options: CallOptions = {}): Promise<{ data: T; total?: number }> {
  const headers: Record<string, string> = { 'accept-language': uiLanguage(), ...options.headers };
  if (session.token) headers.authorization = session.token;
  let body: BodyInit | undefined;
  if (options.form) body = options.form;
  else if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  let response: Response;
  try {
    response = await fetch(`/api${path}`, { method, headers, body, signal: AbortSignal.timeout(options.timeoutMs ?? 10_000) });
  } catch (error) {
    return fail(0, `网络错误：${(error as Error).message}`, options);
  }
  let wrapper: Wrapper<T> | undefined;
  try {
    wrapper = (await response.json()) as Wrapper<T>;
  } catch {
    wrapper = undefined;
  }
  if (response.status === 401) {
    setToken(null);
    onUnauthorized();
    return fail(401, wrapper?.errorMsg ?? '请先登录', options);
  }
  if (!response.ok || !wrapper || !wrapper.success) {
    return fail(response.status, wrapper?.errorMsg ?? `HTTP ${response.status}`, options);
  }
  return { data: wrapper.data as T, ...(wrapper.total !== undefined ? { total: wrapper.total } : {}) };
}

function fail(status: number, message: string, options: CallOptions): never {
  if (!options.quiet) toastError(message);
  throw new ApiError(status, message);
}

export const api = {
  sendCode: (phone: string) => call<Data<'/api/user/code', 'post'>>('POST', `/user/code?phone=${encodeURIComponent(phone)}`),
  login: (phone: string, code: string) => call<Data<'/api/user/login', 'post'>>('POST', '/user/login', { body: { phone, code } }),
  logout: () => call<Data<'/api/user/logout', 'post'>>('POST', '/user/logout'),
  me: () => call<Me>('GET', '/user/me'),
  shopTypes: () => call<ShopType[]>('GET', '/shop-type/list'),
  shopsOfType: (typeId: string, current: number, x: number, y: number) =>
    call<Shop[]>('GET', `/shop/of/type?typeId=${typeId}&current=${current}&x=${x}&y=${y}`),
  shop: (id: string) => call<Shop>('GET', `/shop/${id}`),
  vouchers: (shopId: string) => call<Voucher[]>('GET', `/voucher/list/${shopId}`),
  seckill: (voucherId: string, purchaseToken?: string) =>
    call<Data<'/api/voucher-order/seckill/{id}', 'post'>>('POST', `/voucher-order/seckill/${voucherId}`, {
      quiet: true,
      ...(purchaseToken ? { headers: { 'x-purchase-token': purchaseToken } } : {}),
    }),
  purchaseToken: (voucherId: string, captcha?: string) =>
    call<Data<'/api/voucher-order/seckill/{id}/token', 'post'>>('POST', `/voucher-order/seckill/${voucherId}/token`, {
      quiet: true,
      body: (captcha === undefined ? {} : { captcha }) satisfies Body<'/api/voucher-order/seckill/{id}/token', 'post'>,
    }),
  /** An ALTCHA proof-of-work challenge, as altcha-lib (purchase-gate.ts) types and solves it. */
  captcha: (voucherId: string) => call<Challenge>('GET', `/voucher-order/seckill/${voucherId}/captcha`, { quiet: true }),
  order: (id: string) => call<Order>('GET', `/voucher-order/${id}`),
  pay: (id: string) => call<Data<'/api/voucher-order/{id}/pay', 'post'>>('POST', `/voucher-order/${id}/pay`),
  myOrders: (current = 1) => call<MyOrder[]>('GET', `/voucher-order/of/me?current=${current}`),
  hotBlogs: (current = 1) => call<Data<'/api/blog/hot', 'get'>>('GET', `/blog/hot?current=${current}`),
  blog: (id: string) => call<Blog>('GET', `/blog/${id}`),
  like: (id: string) => call<Data<'/api/blog/like/{id}', 'put'>>('PUT', `/blog/like/${id}`),
  likers: (id: string) => call<Data<'/api/blog/likes/{id}', 'get'>>('GET', `/blog/likes/${id}`),
  myBlogs: (current = 1) => call<Data<'/api/blog/of/me', 'get'>>('GET', `/blog/of/me?current=${current}`),
  createBlog: (blog: Body<'/api/blog', 'post'>) => call<Data<'/api/blog', 'post'>>('POST', '/blog', { body: blog }),
  uploadImage: (file: File) => {
    const form = new FormData();
    form.append('file', file);
    return call<Data<'/api/upload/blog', 'post'>>('POST', '/upload/blog', { form, timeoutMs: 30_000 });
  },
  createShop: (shop: Body<'/api/shop', 'post'>) => call<Data<'/api/shop', 'post'>>('POST', '/shop', { body: shop }),
  createSeckillVoucher: (voucher: Body<'/api/voucher/seckill', 'post'>) =>
    call<Data<'/api/voucher/seckill', 'post'>>('POST', '/voucher/seckill', { body: voucher }),
  pauseSale: (voucherId: string) => call<Data<'/api/voucher/seckill/{id}/pause', 'post'>>('POST', `/voucher/seckill/${voucherId}/pause`),
  resumeSale: (voucherId: string) => call<Data<'/api/voucher/seckill/{id}/resume', 'post'>>('POST', `/voucher/seckill/${voucherId}/resume`),
  updateSale: (voucherId: string, change: Body<'/api/voucher/seckill/{id}', 'patch'>) =>
    call<SaleControl>('PATCH', `/voucher/seckill/${voucherId}`, { body: change }),
  saleAudit: (voucherId: string) => call<SaleAuditEntry[]>('GET', `/voucher/seckill/${voucherId}/audit`),
  follow: (userId: string, follow: boolean) => call<Data<'/api/follow/{id}/{isFollow}', 'put'>>('PUT', `/follow/${userId}/${follow}`),
  isFollowing: (userId: string) => call<Data<'/api/follow/or/not/{id}', 'get'>>('GET', `/follow/or/not/${userId}`),
  feed: (lastId?: number, offset = 0) =>
    call<Data<'/api/blog/of/follow', 'get'>>('GET', `/blog/of/follow?offset=${offset}${lastId === undefined ? '' : `&lastId=${lastId}`}`),
  sign: () => call<Data<'/api/user/sign', 'post'>>('POST', '/user/sign'),
  signStreak: () => call<Data<'/api/user/sign/count', 'get'>>('GET', '/user/sign/count'),
  signMonth: () => call<SignMonth>('GET', '/user/sign/month'),
};

/** The logged-in user, loaded once per token (null when not logged in). */
export async function currentUser(): Promise<Me | null> {
  if (!session.token) return null;
  if (!session.user) session.user = (await api.me()).data;
  return session.user;
}
