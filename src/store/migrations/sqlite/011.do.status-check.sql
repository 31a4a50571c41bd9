-- PostgreSQL's migration 011 adds the function its one-statement firmware writes call
-- when a status record changed under them. SQLite's single writer needs none: this
-- migration keeps the two stores' schema versions the same.
SELECT 1;
