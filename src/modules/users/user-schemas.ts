import { Type } from 'typebox';
import { Id } from '../../lib/wire/index.js';

// What the user routes answer (their response schemas), and the user as other modules show it.

/** A user as others see them: hmdp's UserDTO (session-store.ts UserSummary). */
export const UserSummarySchema = Type.Object({ id: Id, nickName: Type.String(), icon: Type.String() });

/** The logged-in user with the session's role (session-store.ts SessionUser). */
export const SessionUserSchema = Type.Object({
  ...UserSummarySchema.properties,
  role: Type.Union([Type.Literal('user'), Type.Literal('admin')], { description: 'admin: may use the routes marked "Administrators only"' }),
});
