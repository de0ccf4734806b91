export { ERRORS, type ErrorCode, type ErrorSpec } from './catalogue.ts';
export { WharfError, coerceError, formatMessage, invalidField, type ErrorParams } from './wharf-error.ts';
