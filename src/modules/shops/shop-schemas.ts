import { Type } from 'typebox';
import { Id, Timestamp } from '../../lib/wire/index.js';

// What the shop routes answer (their response schemas).

/** A shop as the front end reads it (shop-service.ts ShopView). */
export const ShopViewSchema = Type.Object({
  id: Id,
  name: Type.String(),
  typeId: Id,
  images: Type.String({ description: 'comma-separated picture names' }),
  area: Type.String(),
  address: Type.String(),
  x: Type.Number({ description: 'longitude' }),
  y: Type.Number({ description: 'latitude' }),
  avgPrice: Type.Integer({ description: 'yuan per person' }),
  sold: Type.Integer(),
  comments: Type.Integer(),
  score: Type.Integer({ description: 'stars × 10 (45 = 4.5 stars)' }),
  openHours: Type.String(),
  createTime: Timestamp,
  updateTime: Timestamp,
  distance: Type.Optional(Type.Number({ description: 'metres, on a search by position' })),
});

/** A shop type (shop-type-repository.ts ShopTypeView). */
export const ShopTypeSchema = Type.Object({ id: Id, name: Type.String(), icon: Type.String(), sort: Type.Integer() });
