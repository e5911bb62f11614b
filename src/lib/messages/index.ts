export {
  bothTexts,
  defineMessages,
  interpolate,
  LANGUAGES,
  registeredMessages,
  render,
  type Language,
  type Message,
  type MessageFactory,
  type MessageParams,
  type MessageTexts,
} from './messages.js';
