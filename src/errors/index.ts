export { ERRORS, type ErrorCode, type ErrorSpec } from './catalogue.ts';
export { WharfError, coerceError, formatMessage, type ErrorParams } from './wharf-error.ts';
