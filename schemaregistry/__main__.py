import sys

from schemaregistry.main import main

sys.exit(main())
