export * from './errors';
export * from './envelope';
export * from './commands';
export * from './events';
export * from './http';
export * from './webhook';
export * from './config';
export * from './relay';
