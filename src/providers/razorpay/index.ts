import type { RazorpaySettings } from '../../config/settings.js';
import type { ProviderDefinition } from '../provider.js';
import { razorpayToCanonical } from './normalize.js';
import { createRazorpayVerifier } from './verify.js';

export const razorpay: ProviderDefinition<RazorpaySettings> = {
  name: 'razorpay',
  variables: ['RAZORPAY_WEBHOOK_SECRET'],
  createVerifier: createRazorpayVerifier,
  toCanonical: razorpayToCanonical,
};
