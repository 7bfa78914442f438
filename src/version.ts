/** The service version, reported by /health, the OpenAPI document and the User-Agent. */
export const SERVICE_VERSION = "1.0.0";
export const USER_AGENT = `secsnap/${SERVICE_VERSION}`;
