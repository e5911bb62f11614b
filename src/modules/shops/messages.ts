import { defineMessages } from '../../lib/messages/index.js';

/** What the shops module tells users, in both languages (src/lib/messages); hmdp's wording where it had one. */
export const SHOP_MESSAGES = defineMessages('shops', {
  shopNotFound: { en: 'Shop {id} not found', zh: '店铺不存在（{id}）' },
  shopTypeMissing: { en: 'body.typeId: shop type {typeId} does not exist', zh: 'body.typeId：店铺类型 {typeId} 不存在' },
  xNeedsY: { en: 'querystring.x is required with querystring.y', zh: '给出 querystring.y 时必须同时给出 querystring.x' },
  yNeedsX: { en: 'querystring.y is required with querystring.x', zh: '给出 querystring.x 时必须同时给出 querystring.y' },
  // Schema field texts (errorMessage of the route schemas).
  longitudeRange: { en: 'must be a longitude from -{limit} to {limit}', zh: '经度应在 -{limit} 到 {limit} 之间' },
  latitudeRange: { en: 'must be a latitude from -{limit} to {limit}', zh: '纬度应在 -{limit} 到 {limit} 之间' },
  wholeNumber: { en: 'must be a whole number from 0', zh: '应为不小于 0 的整数' },
  score: { en: 'must be stars × 10, from 0 to 50', zh: '应为星级 × 10，从 0 到 50' },
});
