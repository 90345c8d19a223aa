import { z } from 'zod';

export const AuthRequestBody = z.object({
  username: z.string({ error: 'username must be a string' }).min(1, { error: 'username must not be empty' }),
  password: z.string({ error: 'password must be a string' }).min(1, { error: 'password must not be empty' }),
});

export const RegisterRequestBody = z.object({
  machine_name: z.string({ error: 'machine_name must be a string' }).min(1).max(200),
  public_key: z.string({ error: 'public_key must be a string' }).min(1).max(4096),
});

export const HealthResponse = z.object({ status: z.literal('ok'), uptime_seconds: z.number().int() });
