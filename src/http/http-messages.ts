import { defineMessages } from '../lib/messages/index.js';

/** The messages of the shared HTTP plumbing (src/http): routing, limits, deadlines, faults, validation. */
export const HTTP_MESSAGES = defineMessages('http', {
  loginRequired: { en: 'Please log in first', zh: '请先登录' },
  routeNotFound: { en: 'No route for {method} {path}', zh: '接口不存在：{method} {path}' },
  internalError: { en: 'Internal server error (request id {requestId})', zh: '服务器内部错误（请求编号 {requestId}）' },
  dependencyUnreachable: {
    en: '{dependency} is unreachable, please retry (request id {requestId})',
    zh: '{dependency} 无法连接，请稍后重试（请求编号 {requestId}）',
  },
  dependencyStalled: {
    en: '{dependency} is not answering in time, please retry (request id {requestId})',
    zh: '{dependency} 响应超时，请稍后重试（请求编号 {requestId}）',
  },
  serviceUnavailable: {
    en: 'Service temporarily unavailable, please retry (request id {requestId})',
    zh: '服务暂时不可用，请稍后重试（请求编号 {requestId}）',
  },
  appUnreachable: { en: 'The service is unreachable right now, please retry in {seconds} s', zh: '服务暂时无法访问，请 {seconds} 秒后重试' },
  deadlinePassed: {
    en: 'No answer within {ms} ms (a dependency is slow), please retry',
    zh: '{ms} 毫秒内没有结果（依赖的服务较慢），请稍后重试',
  },
  withRequestId: { en: '{message} (request id {requestId})', zh: '{message}（请求编号 {requestId}）' },
  tooManyFromAddress: { en: 'Too many requests from this address: try again in {seconds} s', zh: '该地址请求过于频繁，请 {seconds} 秒后再试' },
  malformedUrl: { en: 'The URL is malformed (bad percent-encoding)', zh: 'URL 格式错误（百分号编码无效）' },
  paramTooLong: { en: 'A path parameter is too long', zh: '路径参数过长' },
  targetTooLong: { en: 'The URL (path and query) is over {max} characters', zh: 'URL（路径和查询参数）超过 {max} 个字符' },
  requestTimeout: { en: 'The request took too long to arrive', zh: '请求发送超时' },
  headersTooLarge: { en: 'The request headers are too large', zh: '请求头过大' },
  malformedRequest: { en: 'Malformed HTTP request', zh: 'HTTP 请求格式错误' },
  bodyTooLarge: { en: '{detail}', zh: '请求体过大' },
  unsupportedMediaType: { en: '{detail}', zh: '不支持的 Content-Type' },
  invalidJson: { en: '{detail}', zh: '请求体不是有效的 JSON' },
  bodyLengthMismatch: { en: '{detail}', zh: '请求体长度与 Content-Length 不符' },
  forbiddenPath: { en: 'Access to this path is forbidden', zh: '禁止访问该路径' },
  missingHost: { en: 'The request has no Host header', zh: '请求缺少 Host 头' },
  duplicateHost: { en: 'The request has more than one Host header', zh: '请求含有多个 Host 头' },
  // Fastify's and its plugins' other refusals: their English detail, and no English in Chinese.
  badRequest: { en: '{detail}', zh: '请求无效' },
  clientError: { en: '{detail}', zh: '请求无法处理（HTTP {status}）' },
  // Schema field texts of the shared schemas (src/http/schemas.ts).
  idFormat: { en: 'must be a positive integer id', zh: 'id 应为正整数' },
  idBodyFormat: {
    en: 'must be a positive integer id: a string of digits, or a number up to 9007199254740991 (send larger ids as strings)',
    zh: 'id 应为正整数：数字字符串，或不超过 9007199254740991 的数字（更大的 id 请以字符串发送）',
  },
  instantFormat: {
    en: 'must be an RFC 3339 date-time with offset between 1970 and 9999, e.g. 2026-12-01T10:00:00+08:00',
    zh: '应为带时区的 RFC 3339 时间，介于 1970 年与 9999 年之间，例如 2026-12-01T10:00:00+08:00',
  },
  textLine: {
    en: 'must contain a visible character, on one line, without control or invalid characters',
    zh: '应包含可见字符，且为单行、不含控制字符或无效字符',
  },
  textLineMayBeEmpty: { en: 'must be one line without control or invalid characters', zh: '应为单行且不含控制字符或无效字符' },
  textLines: {
    en: 'must contain a visible character and no control or invalid characters but line breaks and tabs',
    zh: '应包含可见字符，且除换行和制表符外不含控制字符或无效字符',
  },
  textLinesMayBeEmpty: { en: 'must contain no control or invalid characters but line breaks and tabs', zh: '除换行和制表符外不应含控制字符或无效字符' },
  pageNumber: { en: 'must be a page number from 1', zh: '页码应为从 1 开始的整数' },
  metricsTokenRequired: { en: 'A metrics token is required', zh: '需要 metrics 令牌' },
});

/**
 * Validation failures (src/http/error-handling.ts): the English sentences are Ajv's; the Chinese
 * ones name the field the same way (`body.phone`).
 */
export const VALIDATION_MESSAGES = defineMessages('validation', {
  required: { en: '{field} is required', zh: '缺少参数 {field}' },
  custom: { en: '{field} {text}', zh: '{text}（{field}）' },
  type: { en: '{field} {text}', zh: '参数 {field} 的类型应为 {type}' },
  tooSmall: { en: '{field} {text}', zh: '参数 {field} 应不小于 {limit}' },
  tooLarge: { en: '{field} {text}', zh: '参数 {field} 应不大于 {limit}' },
  tooShort: { en: '{field} {text}', zh: '参数 {field} 至少应有 {limit} 个字符' },
  tooLong: { en: '{field} {text}', zh: '参数 {field} 最多 {limit} 个字符' },
  unknownProperty: { en: '{field} {text}', zh: '参数 {field} 不允许有字段 {property}' },
  unknownField: { en: '{fields} is not a field of this body; its fields are {known}', zh: '参数 {field} 不允许有字段 {unknown}；可用的字段：{known}' },
  unknownFields: { en: '{fields} are not fields of this body; its fields are {known}', zh: '参数 {field} 不允许有字段 {unknown}；可用的字段：{known}' },
  someUnknownFields: {
    en: '{fields} and {others} more are not fields of this body; its fields are {known}',
    zh: '参数 {field} 不允许有字段 {unknown} 等 {count} 个；可用的字段：{known}',
  },
  enumValue: { en: '{field} {text}', zh: '参数 {field} 的取值不在允许范围内' },
  invalid: { en: '{field} {text}', zh: '参数 {field} 格式错误' },
});
