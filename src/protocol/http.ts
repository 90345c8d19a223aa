import * as z from 'zod';
import { displayNameField } from './display-name-field';
import { lazySchema } from './lazy-schema';

export const AuthRequestBody = lazySchema(() =>
  z.object({
    username: z.string({ error: 'username must be a string' }).min(1, { error: 'username must not be empty' }),
    password: z.string({ error: 'password must be a string' }).min(1, { error: 'password must not be empty' }),
  }),
);

export const RegisterRequestBody = lazySchema(() =>
  z.object({
    machine_name: displayNameField('machine_name', 200),
    public_key: z.string({ error: 'public_key must be a string' }).min(1).max(4096),
  }),
);

export const HealthResponse = lazySchema(() => z.object({ status: z.literal('ok'), uptime_seconds: z.number().int() }));
