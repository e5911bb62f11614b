export { TokenSigner, type SignedToken, type SigningKey, type VerifyFailure, type VerifyResult } from './signer.js';
