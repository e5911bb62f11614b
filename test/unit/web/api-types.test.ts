import { describe, expect, it } from 'vitest';
import { GENERATE_COMMAND, readCurrent, renderApiTypes } from '../../../scripts/api-types.js';

describe("web/src/generated/api.d.ts: the web app's types of /api, from the server's OpenAPI document", () => {
  it(`is what \`${GENERATE_COMMAND}\` writes for the routes as they are`, async () => {
    const expected = await renderApiTypes();
    expect(readCurrent(), `web/src/generated/api.d.ts is stale: run ${GENERATE_COMMAND}`).toBe(expected);
  });
});
