/**
 * Payload formats (DESIGN §4): what a node is handed and how a client asks for it. A
 * format is a media type and the rules negotiation and delivery apply to it; one or more
 * provisioners (`./provisioner.ts`) write it. cloud-config is written by the cloud-init
 * and the cloudbase-init provisioners; Ignition by the 3.x and the 2.3 provisioners.
 */

/** How a payload fares against a platform's user data limit (`src/platform.ts`). */
export interface UserDataRule {
  /** What the payload is called in messages, e.g. `cloud-config`, `Ignition config`. */
  noun: string;
  /** The program on the node that reads it, e.g. `cloud-init`, `Ignition`. */
  reader: string;
  /**
   * True when the reader recognises user data gzip-compressed whole (by its magic bytes),
   * so a payload over a limit may be delivered that way.
   */
  gzip: boolean;
}

/** The `version=` media type parameter of a versioned format (Ignition's spec). */
export interface FormatVersions {
  /** What a version is called in messages, e.g. `Ignition spec`. */
  noun: string;
  /** The versions served, for messages, e.g. `2.3.0 and 3.0.0 to 3.6.0`. */
  served: string;
  /** Who reads them, for the 406 message (`bootwright serves Ignition 2.3.0 and …`). */
  reader: string;
}

/** A payload format. */
export interface PayloadFormat<Name extends string = string> {
  /** Its name in `spec.output.format`, `?format=`, `--format` and the render envelope. */
  name: Name;
  /** What the format is called in prose (`cloud-config`, `Ignition`). */
  title: string;
  /** The media type offered in negotiation (RFC 9110 §12.5.1), without parameters. */
  mediaType: string;
  /**
   * `text`: the payload is text, sent as `mediaType; charset=utf-8` and a string in
   * OpenAPI; `json`: a JSON document, sent with the media type the render gives, exactly
   * (`…; version=3.4.0`), and an object in OpenAPI.
   */
  body: 'text' | 'json';
  /** What the payload is, for the OpenAPI document (`a #cloud-config document`). */
  description: string;
  /** The `version=` parameter; absent for an unversioned media type. */
  versions?: FormatVersions;
  /** The user data rule of the format's default provisioner (a provisioner may have its own). */
  userData: UserDataRule;
}
