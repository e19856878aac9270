import type { StripeSettings } from '../../config/settings.js';
import type { ProviderDefinition } from '../provider.js';
import { stripeToCanonical } from './normalize.js';
import { createStripeVerifier } from './verify.js';

export const stripe: ProviderDefinition<StripeSettings> = {
  name: 'stripe',
  variables: ['STRIPE_WEBHOOK_SECRET'],
  createVerifier: createStripeVerifier,
  toCanonical: stripeToCanonical,
};
