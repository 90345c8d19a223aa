// The store keeps each conversation's preview too, so the function lives with the protocol's limit.
export { previewOf } from '../protocol/preview';
