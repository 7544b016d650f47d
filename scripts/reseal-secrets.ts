import { loadConfig } from '../src/config/config';
import { createDataSource } from '../src/database/data-source';
import { WebhookEndpointEntity } from '../src/modules/webhooks/webhook-endpoint.entity';
import { WebhookEndpointsRepository } from '../src/modules/webhooks/webhook-endpoints.repository';
import { WebhookSecrets } from '../src/modules/webhooks/webhook-secrets';

/**
 * The last step of a SECRET_KEY rotation (docs/operations.md): with the new key in SECRET_KEY and the old one
 * in SECRET_KEY_PREVIOUS, seals every stored webhook secret under the new key. Afterwards SECRET_KEY_PREVIOUS
 * can be removed. Safe to run while the service runs, and to run again.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const ds = createDataSource(config.databaseUrl, 2);
  await ds.initialize();
  try {
    const secrets = new WebhookSecrets(config, new WebhookEndpointsRepository(ds.getRepository(WebhookEndpointEntity)));
    const n = await secrets.resealAll();
    console.log(`webhook secrets sealed again under SECRET_KEY: ${n}`);
  } finally {
    await ds.destroy();
  }
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
