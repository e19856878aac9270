import { InboxError } from '../errors.js';

/** An operator command cannot do what was asked (unknown event, bad argument, unusable archive). */
export class OperationError extends InboxError {
  constructor(message: string, code = 'operation_failed') {
    super(code, 400, message);
  }
}
