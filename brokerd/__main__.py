import sys

from brokerd.main import main

sys.exit(main())
