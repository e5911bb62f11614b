import { defineMessages } from '../../lib/messages/index.js';

/** What the users module tells users, in both languages (src/lib/messages); hmdp's wording where it had one. */
export const USER_MESSAGES = defineMessages('users', {
  smsFailed: { en: 'Could not send the code by SMS: try again in {seconds} s', zh: '验证码短信发送失败，请 {seconds} 秒后重试' },
  noValidCode: { en: 'No valid code for this phone: request a new one', zh: '验证码已失效，请重新获取' },
  wrongCode: { en: 'Wrong code', zh: '验证码错误' },
  userNotFound: { en: 'User {id} not found', zh: '用户 {id} 不存在' },
  adminOnly: { en: 'Only administrators may do this', zh: '只有管理员可以执行此操作' },
  tooManyCodesFromAddress: {
    en: 'Too many codes requested from this address: try again in {seconds} s',
    zh: '该地址获取验证码过于频繁，请 {seconds} 秒后再试',
  },
  tooManyCodesForPhone: { en: 'Too many codes requested for this phone: try again in {seconds} s', zh: '该手机号获取验证码过于频繁，请 {seconds} 秒后再试' },
  // Schema field texts (errorMessage of the route schemas).
  phoneFormat: { en: 'must be a mainland-China mobile number (11 digits starting with 13-19)', zh: '手机号格式错误' },
  codeFormat: { en: 'must be the 6-digit code sent by SMS', zh: '验证码应为短信收到的 6 位数字' },
});
