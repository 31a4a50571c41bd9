-- Why a discovered machine matched nothing, and the platform iPXE reported (issue 31):
-- `why` is a sentence of src/boot/match.ts whyUnmatched (the latest sighting's),
-- `buildarch` and `platform` iPXE's ${buildarch} and ${platform} ('' when not reported).
-- Rows written before this migration hold '' until they are seen again.
ALTER TABLE discovered ADD COLUMN why TEXT NOT NULL DEFAULT '';
ALTER TABLE discovered ADD COLUMN buildarch TEXT NOT NULL DEFAULT '';
ALTER TABLE discovered ADD COLUMN platform TEXT NOT NULL DEFAULT '';
