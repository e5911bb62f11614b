/**
 * The RabbitMQ path's faults' door (docs/reliability-rabbitmq.md): an order writer SIGKILLed
 * mid-batch, the cluster stopped, the node leading the order queue SIGKILLed; one 3-node cluster
 * for the three (broker.ts), stopped by `stopSharedCluster` once they are done.
 */
export { stopSharedCluster } from './broker.js';
export { rabbitmqNodeKill } from './rabbitmq-node-kill.js';
export { rabbitmqOutage } from './rabbitmq-outage.js';
export { rabbitmqWriterKill } from './rabbitmq-writer-kill.js';
