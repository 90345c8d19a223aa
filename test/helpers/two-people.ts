// A service (useService) whose service.json has two password users, ada and bob (two people), each logged
// in (POST /auth) on a socket of their own before any test; the sockets are closed when the file ends.
import { after } from 'node:test';
import { passwordUsers, sessionClient } from './service';
import { useService, type ServiceWithFake } from './service-fixture';
import type { TestClient } from './ws-client';

export const TWO_PEOPLE_PASSWORD = 'correct horse battery staple';

export interface TwoPeople {
  svc: ServiceWithFake;
  ada(): TestClient;
  bob(): TestClient;
}

export function useTwoPeople(options: { workspace?: boolean } = {}): TwoPeople {
  const clients: { ada?: TestClient; bob?: TestClient } = {};
  const svc = useService({
    workspace: options.workspace,
    config: async () => ({ model: 'fake-model', users: await passwordUsers(TWO_PEOPLE_PASSWORD, 'ada', 'bob') }),
    afterStart: async (started) => {
      clients.ada = await sessionClient(started, 'ada', TWO_PEOPLE_PASSWORD);
      clients.bob = await sessionClient(started, 'bob', TWO_PEOPLE_PASSWORD);
    },
  });
  after(() => {
    clients.ada?.close();
    clients.bob?.close();
  });
  return { svc, ada: () => clients.ada!, bob: () => clients.bob! };
}
