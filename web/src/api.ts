import type { Challenge } from 'altcha-lib';
import { reactive } from 'vue';
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

export interface User {
  id: string;
  nickName: string;
  icon: string;
}
/** GET /user/me: the user plus the session's role (the admin page link shows for admins only). */
export interface Me extends User {
  role: 'user' | 'admin';
}
export interface ShopType {
  id: string;
  name: string;
  icon: string;
  sort: number;
}
export interface Shop {
  id: string;
  name: string;
  typeId: string;
  images: string;
  area: string;
  address: string;
  x: number;
  y: number;
  avgPrice: number;
  sold: number;
  comments: number;
  score: number;
  openHours: string;
  distance?: number;
}
export interface Voucher {
  id: string;
  shopId: string;
  title: string;
  subTitle: string;
  rules: string;
  payValue: number;
  actualValue: number;
  type: number;
  status: number;
  stock?: number;
  beginTime?: string;
  endTime?: string;
  /** Seckill vouchers: `token` or `captcha` when an order needs a purchase token first. */
  purchaseGate?: 'off' | 'token' | 'captcha';
}
/** A sale's settings after an administrator's change; stock is the total offered, left what remains. */
export interface SaleSettings {
  stock: number;
  beginTime: string;
  endTime: string;
  paused: boolean;
}
export interface SaleControl extends SaleSettings {
  voucherId: string;
  left: number;
  changed: boolean;
}
export interface SaleAuditEntry {
  id: string;
  adminId: string;
  action: string;
  before: SaleSettings;
  after: SaleSettings;
  time: string;
}
export type OrderState = 'queued' | 'created' | 'paid' | 'used' | 'cancelled' | 'refunding' | 'refunded';
export interface Order {
  id: string;
  voucherId: string;
  state: OrderState;
  createTime?: string;
  payTime?: string;
}
/** One line of GET /voucher-order/of/me. */
export interface MyOrder extends Order {
  title: string;
  shopId: string;
  payValue: number;
  createTime: string;
}
export interface Blog {
  id: string;
  shopId: string;
  userId: string;
  title: string;
  content: string;
  images: string;
  liked: number;
  comments: number;
  name?: string;
  icon?: string;
  isLike?: boolean;
  createTime?: string;
}

export interface SignMonth {
  month: string;
  daysInMonth: number;
  signedDays: number[];
  today: number | null;
}

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
  sendCode: (phone: string) => call<null>('POST', `/user/code?phone=${encodeURIComponent(phone)}`),
  login: (phone: string, code: string) => call<string>('POST', '/user/login', { body: { phone, code } }),
  logout: () => call<null>('POST', '/user/logout'),
  me: () => call<Me>('GET', '/user/me'),
  shopTypes: () => call<ShopType[]>('GET', '/shop-type/list'),
  shopsOfType: (typeId: string, current: number, x: number, y: number) =>
    call<Shop[]>('GET', `/shop/of/type?typeId=${typeId}&current=${current}&x=${x}&y=${y}`),
  shop: (id: string) => call<Shop>('GET', `/shop/${id}`),
  vouchers: (shopId: string) => call<Voucher[]>('GET', `/voucher/list/${shopId}`),
  seckill: (voucherId: string, purchaseToken?: string) =>
    call<string>('POST', `/voucher-order/seckill/${voucherId}`, { quiet: true, ...(purchaseToken ? { headers: { 'x-purchase-token': purchaseToken } } : {}) }),
  purchaseToken: (voucherId: string, captcha?: string) =>
    call<{ token: string; expiresAt: string }>('POST', `/voucher-order/seckill/${voucherId}/token`, {
      quiet: true,
      body: captcha === undefined ? {} : { captcha },
    }),
  /** An ALTCHA proof-of-work challenge (purchase-gate.ts solves it). */
  captcha: (voucherId: string) => call<Challenge>('GET', `/voucher-order/seckill/${voucherId}/captcha`, { quiet: true }),
  order: (id: string) => call<Order>('GET', `/voucher-order/${id}`),
  pay: (id: string) => call<Order>('POST', `/voucher-order/${id}/pay`),
  myOrders: (current = 1) => call<MyOrder[]>('GET', `/voucher-order/of/me?current=${current}`),
  hotBlogs: (current = 1) => call<Blog[]>('GET', `/blog/hot?current=${current}`),
  blog: (id: string) => call<Blog>('GET', `/blog/${id}`),
  like: (id: string) => call<{ isLike: boolean; liked: number }>('PUT', `/blog/like/${id}`),
  likers: (id: string) => call<User[]>('GET', `/blog/likes/${id}`),
  myBlogs: (current = 1) => call<Blog[]>('GET', `/blog/of/me?current=${current}`),
  createBlog: (blog: { shopId: string; title: string; content: string; images: string }) => call<string>('POST', '/blog', { body: blog }),
  uploadImage: (file: File) => {
    const form = new FormData();
    form.append('file', file);
    return call<string>('POST', '/upload/blog', { form, timeoutMs: 30_000 });
  },
  createShop: (shop: { name: string; typeId: string; area: string; address: string; x: number; y: number; avgPrice: number; openHours: string }) =>
    call<string>('POST', '/shop', { body: shop }),
  createSeckillVoucher: (voucher: {
    shopId: string;
    title: string;
    subTitle: string;
    payValue: number;
    actualValue: number;
    stock: number;
    beginTime: string;
    endTime: string;
  }) => call<string>('POST', '/voucher/seckill', { body: voucher }),
  pauseSale: (voucherId: string) => call<SaleControl>('POST', `/voucher/seckill/${voucherId}/pause`),
  resumeSale: (voucherId: string) => call<SaleControl>('POST', `/voucher/seckill/${voucherId}/resume`),
  updateSale: (voucherId: string, change: { stock?: number; beginTime?: string; endTime?: string }) =>
    call<SaleControl>('PATCH', `/voucher/seckill/${voucherId}`, { body: change }),
  saleAudit: (voucherId: string) => call<SaleAuditEntry[]>('GET', `/voucher/seckill/${voucherId}/audit`),
  follow: (userId: string, follow: boolean) => call<null>('PUT', `/follow/${userId}/${follow}`),
  isFollowing: (userId: string) => call<boolean>('GET', `/follow/or/not/${userId}`),
  feed: (lastId?: number, offset = 0) =>
    call<{ list: Blog[]; minTime: number; offset: number }>('GET', `/blog/of/follow?offset=${offset}${lastId === undefined ? '' : `&lastId=${lastId}`}`),
  sign: () => call<{ alreadySigned: boolean }>('POST', '/user/sign'),
  signStreak: () => call<number>('GET', '/user/sign/count'),
  signMonth: () => call<SignMonth>('GET', '/user/sign/month'),
};

/** The logged-in user, loaded once per token (null when not logged in). */
export async function currentUser(): Promise<Me | null> {
  if (!session.token) return null;
  if (!session.user) session.user = (await api.me()).data;
  return session.user;
}
