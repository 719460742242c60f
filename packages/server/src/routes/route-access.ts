import type { Role } from '@auditlake/model';

/** Per-route access rule, attached as fastify route `config`. Routes without one are open. */
export interface RouteAccess {
  role: Role;
  /** The action recorded when a caller without the role is refused (403). */
  action: string;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: RouteAccess;
  }
  interface FastifyRequest {
    principal?: import('../auth/authenticator.js').Principal;
  }
}
