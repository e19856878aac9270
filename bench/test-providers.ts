import { ProviderRegistry } from '../src/providers/registry.js';
import { TEST_SECRETS } from '../test/support/signing.js';

/** The providers with the secrets the bench's deliveries are signed with (bench/deliveries.ts). */
export function testProviders(): ProviderRegistry {
  return new ProviderRegistry({
    stripe: { secrets: [TEST_SECRETS.stripe], toleranceSeconds: 300 },
    razorpay: { secrets: [TEST_SECRETS.razorpay] },
    payu: { merchantKey: TEST_SECRETS.payuKey, merchantSalt: TEST_SECRETS.payuSalt },
  });
}
