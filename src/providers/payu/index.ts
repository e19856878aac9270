import type { PayuSettings } from '../../config/settings.js';
import type { ProviderDefinition } from '../provider.js';
import { payuToCanonical } from './normalize.js';
import { createPayuVerifier } from './verify.js';

export const payu: ProviderDefinition<PayuSettings> = {
  name: 'payu',
  variables: ['PAYU_MERCHANT_KEY', 'PAYU_MERCHANT_SALT'],
  createVerifier: createPayuVerifier,
  toCanonical: payuToCanonical,
};
